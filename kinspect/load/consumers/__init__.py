"""Consumers that keep a ledger: what a consumer group received, processed and committed."""
