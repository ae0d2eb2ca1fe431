"""Reading a response, a file or a feed into text: decoding, extraction, feeds."""
