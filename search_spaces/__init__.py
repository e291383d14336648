"""Built-in search spaces, one module each (see `tlmsearch.profiles.spaces` for the module protocol)."""
