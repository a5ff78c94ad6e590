"""Step 1, sources: where revisions come from - a Git remote, or a local directory (the only Git
I/O)."""
