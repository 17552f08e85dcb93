"""Screens of the babysit app."""
