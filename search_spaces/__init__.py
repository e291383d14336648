"""Built-in search spaces, one module each (see `tlmsearch.spaces` for the module protocol)."""
