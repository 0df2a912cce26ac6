-- Sign-up attempts at POST /v1/signup (issue 47), counted per address and per client IP over a
-- sliding hour, as login_failures counts failed sign-ins: the answer says whether an address has
-- an account (409), so how often anyone may ask is bounded.
create table signup_attempts (
  id bigint generated always as identity primary key,
  email text not null,
  ip text not null,
  created_at timestamptz not null default now()
);
create index signup_attempts_email on signup_attempts (email, created_at);
create index signup_attempts_ip on signup_attempts (ip, created_at);
