"""python -m funcgrad.cli"""
from . import main

main()
