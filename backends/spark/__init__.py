"""Spark's own state as statebench lanes: ``transformWithState`` with TTL (``tws``), the model
of its expiry rules that the spark-tws lanes and the oracle compare against (``tws_model``),
and the spark-sql lane's queries."""
