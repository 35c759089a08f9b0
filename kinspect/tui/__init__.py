"""kinspect.tui"""
