"""The clusters of a whole list, kept small, and batches of them: how a list is threaded
from scratch without holding all of its messages at once.

``cluster_calls`` takes each message's call number and cluster keys
(``threader.cluster_keys``) one at a time and keeps, per message, only its call number
and a slot in an array of integers (a union-find over message numbers), and per key
the number of the first message that carried it. Threading's decisions never cross
clusters, so the clusters can then be threaded a batch at a time (``ListClusters.batches``):
each batch is whole clusters, together at most ``size`` messages, or one cluster
alone when it is bigger; a batch's threads are what threading all the list gives.

This module never touches the disk, the store or the cache, and never threads.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

__all__ = ["ListClusters", "cluster_calls"]


class ListClusters:
    """A list's messages grouped into clusters; each message by its number (the order
    it was given in)."""

    __slots__ = ("_holder", "_names", "_parent", "calls")

    def __init__(self) -> None:
        self.calls: list[str] = []
        """Message number -> call number."""
        self._parent = array("l")
        """Message number -> another message of its cluster, or itself for the cluster's root."""
        self._holder: dict[str, int] = {}
        """Key -> the number of the first message that carried it."""
        self._names: dict[int, str] | None = None
        """Root message number -> the cluster's name, once every message is in."""

    def add(self, call: str, keys: Iterable[str]) -> None:
        number = len(self.calls)
        self.calls.append(call)
        parent = self._parent
        parent.append(number)
        holder = self._holder
        for key in keys:
            other = holder.setdefault(key, number)
            if other == number:
                continue
            # The roots of both (halving the paths walked), the smaller one the root of both.
            a = other
            while parent[a] != a:
                parent[a] = a = parent[parent[a]]
            b = number
            while parent[b] != b:
                parent[b] = b = parent[parent[b]]
            if a != b:
                parent[max(a, b)] = min(a, b)
        self._names = None

    def _cluster_names(self) -> dict[int, str]:
        """Root -> cluster name; makes every message's parent its root."""
        if self._names is None:
            parent = self._parent
            smallest: dict[int, str] = {}
            # A root is smaller than every message below it: in number order, each
            # message's parent is already a root when it is reached.
            for number, call in enumerate(self.calls):
                root = parent[number] = parent[parent[number]]
                if call < smallest.get(root, "~"):
                    smallest[root] = call
            self._names = smallest
        return self._names

    def name(self, number: int) -> str:
        """The name of a message's cluster: the smallest call number in it."""
        return self._cluster_names()[self._parent[number]]

    def key_clusters(self) -> Iterator[tuple[str, str]]:
        """(key, name of the cluster of the messages that carry it) for every key."""
        names, parent = self._cluster_names(), self._parent
        for key, number in self._holder.items():
            yield key, names[parent[number]]

    def forget_keys(self) -> None:
        """Drop the keys (``key_clusters`` is done with); clusters stay."""
        self._holder = {}

    def batches(self, size: int) -> Iterator[list[int]]:
        """Message numbers in batches of whole clusters: at most ``size`` messages, or
        one cluster that alone is bigger."""
        self._cluster_names()
        roots = self._parent
        order = array("l", sorted(range(len(roots)), key=roots.__getitem__))
        batch: list[int] = []
        start = 0
        while start < len(order):
            root = roots[order[start]]
            end = start + 1
            while end < len(order) and roots[order[end]] == root:
                end += 1
            if batch and len(batch) + end - start > size:
                yield batch
                batch = []
            batch.extend(order[start:end])
            start = end
        if batch:
            yield batch


def cluster_calls(messages: Iterable[tuple[str, Iterable[str]]]) -> ListClusters:
    """The clusters of messages given as (call number, cluster keys)."""
    clusters = ListClusters()
    for call, keys in messages:
        clusters.add(call, keys)
    return clusters
