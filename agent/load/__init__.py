"""Step 2, load: a revision's files -> validated models, every problem with file:line and field
path. Pure."""
