"""kinspect.postmortem"""
