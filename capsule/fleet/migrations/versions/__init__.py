"""The fleet schema's revisions, oldest first; each is frozen once landed (never edited)."""
