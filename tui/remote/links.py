"""The pool of SSH links, one per endpoint; asyncssh is loaded only when a link is made."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tui.config import SshEndpoint

if TYPE_CHECKING:
    from tui.remote.sshlink import SshLink


class SshLinks:
    """One :class:`SshLink` per endpoint, shared by every host reached through it."""

    def __init__(self) -> None:
        self._links: dict[SshEndpoint, SshLink] = {}

    def get(self, endpoint: SshEndpoint) -> SshLink:
        link = self._links.get(endpoint)
        if link is None:
            from tui.remote.sshlink import SshLink

            link = self._links[endpoint] = SshLink(endpoint)
        return link

    def __iter__(self) -> Iterator[SshLink]:
        return iter(list(self._links.values()))

    async def close(self) -> None:
        await asyncio.gather(*(link.close() for link in self._links.values()))
        self._links.clear()
