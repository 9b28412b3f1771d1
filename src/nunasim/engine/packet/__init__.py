"""The packet-level engine: discrete events, one per flit per resource."""
