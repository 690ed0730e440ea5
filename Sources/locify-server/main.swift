print("locify-server: not yet implemented")
