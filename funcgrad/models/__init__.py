"""Demo models the command line trains."""
