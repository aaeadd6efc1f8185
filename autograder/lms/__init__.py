"""The learning management system's side: its roster in, the grade files it imports out."""
