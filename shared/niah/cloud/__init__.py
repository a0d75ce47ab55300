"""Google Cloud adapters (Firestore, Pub/Sub, Cloud Storage): the only google.cloud users."""
