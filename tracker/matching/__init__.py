"""Matching pages against the master library: candidates from the indexes, then alignment."""
