schema: '1.2'
contents:
  - core.fga
  - docs.fga
