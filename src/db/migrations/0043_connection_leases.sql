-- Site connection caps across worker processes (issue 46): each process notes how many connections
-- it holds open to a lane (route, site, source address), and opens one more only while the live
-- processes' sum is below the site's cap. A process refreshes its rows while it lives; the rows of
-- one that stopped refreshing no longer count.
create table connection_leases (
  lane text not null,
  holder text not null,
  n int not null,
  seen_at timestamptz not null default now(),
  primary key (lane, holder)
);
