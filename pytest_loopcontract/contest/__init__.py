"""Contest: seats, judges, the validity matrix, the bracket, lessons and the ledger."""

__all__: list[str] = []
