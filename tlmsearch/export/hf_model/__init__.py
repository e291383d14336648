"""The modeling file `tlmsearch export --format hf` copies next to its config.json (standalone)."""
