-- The SQL that searches what `vembed index --sink postgres://...` writes,
-- for the default table names (vembed_items, vembed_items_vectors) and
-- vector columns; for halfvec columns write ::halfvec for ::vector.
-- The tests of package index/pgsink run these queries as written here.

-- name: cosine
-- The ten items nearest the query vector $1 by cosine similarity; an HNSW
-- index (--pg-hnsw) serves this order approximately when present.
select id, path, page, 1 - (embedding <=> $1::vector) as score
from vembed_items
order by embedding <=> $1::vector
limit 10;

-- name: maxsim
-- The ten items that best match the query's multi-vector rows $1 (an
-- array of vectors) by MaxSim: for each query row its largest dot product
-- with a row of the item, summed. Exact: it reads the whole child table.
select i.id, i.path, i.page, s.score
from (
  select m.id, sum(m.best) as score
  from (
    select v.id, max(inner_product(v.embedding, q.embedding)) as best
    from unnest($1::vector[]) with ordinality as q(embedding, n)
    cross join vembed_items_vectors v
    group by v.id, q.n
  ) m
  group by m.id
) s
join vembed_items i on i.id = s.id
order by s.score desc, i.id desc
limit 10;
