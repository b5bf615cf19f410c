"""Text generation measured as vLLM and MLPerf measure it: the token clock, the memory-bandwidth
bound of decoding, quality of a real small model on real text, and the record's `generation`
section. The generate scenario (scenarios/generate.py) puts them together."""
