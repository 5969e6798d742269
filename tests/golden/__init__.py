"""Golden stored-format files: every format version ever written must still load."""
