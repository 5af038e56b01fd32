"""corun: reproduce contention-aware scheduling studies on real testbeds."""

__version__ = "0.1.0"
