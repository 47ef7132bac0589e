"""Conformance against real peers on real tokenizer files (see peer_data)."""
