"""The agent loop: lock → state → context → model ⇄ tools → reply."""
