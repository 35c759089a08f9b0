"""Scenarios: the classic data-loss experiments as data, and the runner that replays them."""
