-- The service-account privilege of site replicas that forward writes (docs/scale-out.md): a user
-- with `may_sudo` may, as itself, only `sudo` to a non-root user (and a few session commands), so
-- that a replica's server can act on the primary as each of its clients. Set by root only
-- (`user_may_sudo <user> on|off`).
ALTER TABLE users ADD COLUMN may_sudo BOOLEAN NOT NULL DEFAULT FALSE;
