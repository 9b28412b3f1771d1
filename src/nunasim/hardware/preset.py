"""A named hardware description: the pod (and its socket) plus where it came from."""

from __future__ import annotations

from dataclasses import dataclass, replace

from nunasim.hardware.pod import Pod
from nunasim.hardware.socket import Socket


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    pod: Pod
    source: str  # "builtin:NAME" or the file it was read from

    @property
    def socket(self) -> Socket:
        return self.pod.socket

    def with_sockets(self, sockets: int) -> Preset:
        return replace(self, pod=self.pod.with_sockets(sockets))
