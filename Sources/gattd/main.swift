print("gattd")
