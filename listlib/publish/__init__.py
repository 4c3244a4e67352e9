"""Publishing output/ to S3-compatible object storage (``listlib publish``): ``plan``
decides what to upload and delete, in which order and with which headers (pure);
``s3`` talks to the bucket through boto3; ``run`` reads the records and carries a plan
out. Nothing is imported here, so planning never loads boto3."""
