#!/usr/bin/env python3
"""Shim so `python cli.py ...` works from a checkout; the commands live in funcgrad/cli/."""
from funcgrad.cli import main

if __name__ == "__main__":
    main()
