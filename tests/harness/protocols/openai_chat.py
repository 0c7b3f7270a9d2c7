def matches(m,p): return False
