"""Record stores: an agent's memories kept as id-keyed records in its own database (Dexto).

A record is a note to the rest of dreamd: its identity is its key, its bytes are a stable
rendering of its exact stored value (``rendering``), and writes are compare-and-swap SQL on
that value (``database``). The agent's own rules live in ``dexto``, with their sources.
"""
