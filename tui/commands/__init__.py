"""One module per CLI verb: each has configure(parser) and run(args) -> exit status."""
