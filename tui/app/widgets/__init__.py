"""Widgets of the babysit app: nouns, each drawing one kind of fact."""
