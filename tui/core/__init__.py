"""The pure core: parsing, cursors, identity, verdicts. No textual, no asyncssh, no I/O."""
