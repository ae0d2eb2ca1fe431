"""Text handling: decoding, normalisation, chapter splitting and pinyin folding."""
