-- Query tokens ended by endQuery before their expiry; rows past `expires` may be purged.
CREATE TABLE revoked_tokens (
    id      TEXT PRIMARY KEY,
    expires BIGINT NOT NULL
);
