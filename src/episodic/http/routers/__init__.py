"""One router per resource, each with the request and response models it alone uses.
``episodic.http.app`` includes them all."""
