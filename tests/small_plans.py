"""Tiny hand-built plans that several test modules share."""

from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.check import check_plan
from nunasim.collectives.plan import Buffer, Chunks, Collective, Plan, Protocol


def one_store_plan(protocol: Protocol = Protocol.SIMPLE) -> Plan:
    """GPU 0 stores one chunk into GPU 1 (an in-place broadcast from GPU 0), proved."""
    b = PlanBuilder(
        "one-store",
        Collective.BROADCAST,
        2,
        input_chunks=0,
        output_chunks=1,
        chunks_per_size=1,
        inplace=True,
        root=0,
    )
    b.threadblock(0, send_peer=1)
    b.threadblock(1, recv_peer=0)
    send = b.step(0, 0, "s", reads=[Chunks(Buffer.OUTPUT, 0)])
    receive = b.step(1, 0, "r")
    b.transfer(send, 1, Chunks(Buffer.OUTPUT, 0), receive, protocol)
    plan = b.build()
    check_plan(plan)
    return plan
