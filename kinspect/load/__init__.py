"""kinspect.load"""
