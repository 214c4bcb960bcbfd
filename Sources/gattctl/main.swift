print("gattctl")
