"""The servers: embedded or configured MongoDB and Redis, Redis Cluster, connections,
locks."""
