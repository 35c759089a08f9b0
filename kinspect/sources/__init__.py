"""kinspect.sources"""
