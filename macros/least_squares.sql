{#-
  Ordinary least squares in portable SQL, for the loss-curve fits of the costing layer
  (models/intermediate/costing/int_cost_law_fitted.sql).

  least_squares_ctes(name, design, group_by, p) returns the CTEs (comma-separated, no
  leading `with`) that fit y = b1 x1 + ... + bp xp within each group of `design`, a
  relation with the group columns, y, x1..xp and c1..cp (a contrast, constant within the
  group: the regressors at the final evaluation minus their counterfactual values). The
  last CTE, `<name>`, holds per group: n (points), b1..bp (coefficients), bc1..bcp (each
  coefficient times its contrast: c'b = bc1 + ... + bcp) and cz = c' (X'X)^-1 c, so the
  contrast c'b has the standard error sqrt(sse / (n - p) * cz).

  How: the normal equations X'X b = X'y (with a second right-hand side, c, for cz) are
  solved by Gaussian elimination unrolled at compile time: p is fixed per call, so the
  solver is p forward-elimination CTEs and p back-substitution CTEs of plain arithmetic,
  with no matrix or array functions (DuckDB, Spark and Postgres run it alike). Each
  regressor is first scaled by its root mean square, which keeps X'X well conditioned
  when the regressors differ by orders of magnitude (an LR of 1e-3 beside a constant).
  X'X of a least-squares fit is symmetric positive semi-definite, so elimination needs no
  pivoting. After the scaling every diagonal entry starts at 1 and each pivot is the share
  of its regressor the earlier ones do not explain (1 - R^2): a pivot below 1e-9 means a
  regressor constant or collinear within the group, and gives NULL coefficients (the fit
  is refused downstream) instead of the huge ones rounding error would make.
-#}
{% macro least_squares_ctes(name, design, group_by, p) %}
{%- set groups = group_by | join(', ') %}
{%- set idx = range(1, p + 1) %}
{{ name }}_sums as (
    select
        {{ groups }},
        count(*) as n,
        {%- for i in idx %}
        sqrt(sum(x{{ i }} * x{{ i }}) / count(*)) as r{{ i }},
        max(c{{ i }}) as craw{{ i }},
        sum(x{{ i }} * y) as traw{{ i }},
        {%- for j in idx if j >= i %}
        sum(x{{ i }} * x{{ j }}) as sraw{{ i }}_{{ j }},
        {%- endfor %}
        {%- endfor %}
        sum(y * y) as yy
    from {{ design }}
    group by {{ groups }}
),

{{ name }}_e0 as (
    -- the scaled normal equations: a_i_j = s_ij / (r_i r_j), t_i = X'y_i / r_i, g_i = c_i / r_i
    select
        {{ groups }},
        n,
        {%- for i in idx %}
        r{{ i }},
        {{ safe_divide('craw' ~ i, 'r' ~ i) }} as cs{{ i }},
        {{ safe_divide('traw' ~ i, 'r' ~ i) }} as t{{ i }},
        {{ safe_divide('craw' ~ i, 'r' ~ i) }} as g{{ i }},
        {%- for j in idx %}
        {%- set lo = [i, j] | min %}{%- set hi = [i, j] | max %}
        {{ safe_divide('sraw' ~ lo ~ '_' ~ hi, 'r' ~ i ~ ' * r' ~ j) }} as a{{ i }}_{{ j }}{{ ',' if not (loop.last and i == p) }}
        {%- endfor %}
        {%- endfor %}
    from {{ name }}_sums
),

{%- for k in range(1, p) %}

{{ name }}_e{{ k }} as (
    -- eliminate column {{ k }} from the rows below it
    select
        {{ groups }},
        n,
        {%- for i in idx %}
        r{{ i }},
        cs{{ i }},
        {%- if i > k %}
        {%- set factor = safe_divide('a' ~ i ~ '_' ~ k, pivot(k)) %}
        t{{ i }} - {{ factor }} * t{{ k }} as t{{ i }},
        g{{ i }} - {{ factor }} * g{{ k }} as g{{ i }},
        {%- for j in idx %}
        {%- if j > k %}
        a{{ i }}_{{ j }} - {{ factor }} * a{{ k }}_{{ j }} as a{{ i }}_{{ j }}{{ ',' if not (loop.last and i == p) }}
        {%- else %}
        cast(0 as {{ type_double() }}) as a{{ i }}_{{ j }}{{ ',' if not (loop.last and i == p) }}
        {%- endif %}
        {%- endfor %}
        {%- else %}
        t{{ i }},
        g{{ i }},
        {%- for j in idx %}
        a{{ i }}_{{ j }}{{ ',' if not (loop.last and i == p) }}
        {%- endfor %}
        {%- endif %}
        {%- endfor %}
    from {{ name }}_e{{ k - 1 }}
),
{%- endfor %}

{%- for k in range(p, 0, -1) %}

{{ name }}_b{{ k }} as (
    -- back substitution: unknown {{ k }} (scaled coefficient bs, and z for the contrast)
    select
        {{ name }}_{{ 'e' ~ (p - 1) if k == p else 'b' ~ (k + 1) }}.*,
        {{ safe_divide('t' ~ k ~ back_terms(k, p, 'bs'), pivot(k)) }} as bs{{ k }},
        {{ safe_divide('g' ~ k ~ back_terms(k, p, 'z'), pivot(k)) }} as z{{ k }}
    from {{ name }}_{{ 'e' ~ (p - 1) if k == p else 'b' ~ (k + 1) }}
),
{%- endfor %}

{{ name }} as (
    select
        {{ groups }},
        n,
        {%- for i in idx %}
        {{ safe_divide('bs' ~ i, 'r' ~ i) }} as b{{ i }},
        bs{{ i }} * cs{{ i }} as bc{{ i }},
        {%- endfor %}
        {% for i in idx %}cs{{ i }} * z{{ i }}{{ ' + ' if not loop.last }}{% endfor %} as cz
    from {{ name }}_b1
)
{% endmacro %}

{#- ' - a<k>_<j> * <unknown><j>' for the unknowns after k (back substitution) -#}
{% macro back_terms(k, p, unknown) -%}
{%- for j in range(k + 1, p + 1) %} - a{{ k }}_{{ j }} * {{ unknown }}{{ j }}{% endfor -%}
{%- endmacro %}

{#- the k-th pivot, NULL when it is below the tolerance (a collinear regressor) -#}
{% macro pivot(k) -%}
case when abs(a{{ k }}_{{ k }}) > 1e-9 then a{{ k }}_{{ k }} end
{%- endmacro %}
