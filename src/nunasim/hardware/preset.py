"""A named hardware description: the pod (and its socket) plus where it came from."""

from __future__ import annotations

from dataclasses import dataclass, replace

from nunasim.hardware.pod import Pod
from nunasim.hardware.socket import Socket


@dataclass(frozen=True)
class Preset:
    """A named pod (``load_preset``): the hardware a scenario runs on, grown to fit its plan."""

    name: str
    description: str
    pod: Pod
    source: str  # "builtin:NAME" or the file it was read from

    @property
    def socket(self) -> Socket:
        """The pod's socket (one GPU)."""
        return self.pod.socket

    def with_sockets(self, sockets: int) -> Preset:
        """This preset with a pod of ``sockets`` sockets."""
        return replace(self, pod=self.pod.with_sockets(sockets))

    def fit(self, gpus: int) -> Preset:
        """This preset with its pod grown to ``gpus`` sockets if it has fewer (``Pod.fit``)."""
        return replace(self, pod=self.pod.fit(gpus))
