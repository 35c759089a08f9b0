"""kinspect.model"""
