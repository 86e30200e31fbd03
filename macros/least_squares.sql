{#-
  Ordinary least squares in portable SQL, for the loss-curve fits of the costing layer
  (models/intermediate/costing/int_cost_law_fitted.sql).

  least_squares_ctes(name, design, group_by, p) returns the CTEs (comma-separated, no
  leading `with`) that fit y = b1 x1 + ... + bp xp within each group of `design`, a
  relation with the group columns, y, x1..xp and c1..cp (a contrast, constant within the
  group: the regressors at the final evaluation minus their counterfactual values). The
  last CTE, `<name>`, holds per group: n (points), b1..bp (coefficients), bc1..bcp (each
  coefficient times its contrast: c'b = bc1 + ... + bcp), cz = c' (X'X)^-1 c and sse, the
  residual sum of squares y'y - 2 b'X'y + b'X'X b (from the same sums: no second pass over
  the design), so the contrast c'b has the standard error sqrt(sse / (n - p) * cz).

  How: the normal equations X'X b = X'y (and X'X z = c, for cz) solved by Cramer's rule,
  the determinants written out at compile time by Laplace expansion (p is fixed per call;
  p! products each, 24 for p = 4). Every solution is one expression over the sums of one
  aggregate, with no chain of dependent steps: a query optimizer that inlines projections
  into each other (Spark's does) cannot blow the expressions up, as it did with an unrolled
  Gaussian elimination. No matrix or array functions: DuckDB, Spark and Postgres run it
  alike. Each regressor is first scaled by its root mean square, so X'X has a unit
  diagonal and its determinant lies in [0, 1], the product of the shares of each regressor
  the others do not explain: below 1e-12 a regressor is constant or collinear within the
  group, and the coefficients are NULL (the fit is refused downstream) instead of the huge
  ones rounding error would make. The sums add their terms in a fixed order (stable_sum), so
  a fit gives the same bytes whatever order its rows arrive in.
-#}
{% macro least_squares_ctes(name, design, group_by, p) %}
{%- set groups = group_by | join(', ') %}
{%- set idx = range(1, p + 1) %}
{%- set matrix = [] %}
{%- for i in idx %}
{%- set row = [] %}
{%- for j in idx %}{% do row.append('a' ~ i ~ '_' ~ j) %}{% endfor %}
{%- do matrix.append(row) %}
{%- endfor %}
{{ name }}_sums as (
    select
        {{ groups }},
        count(*) as n,
        {%- for i in idx %}
        sqrt({{ stable_sum('x' ~ i ~ ' * x' ~ i) }} / count(*)) as r{{ i }},
        max(c{{ i }}) as craw{{ i }},
        {{ stable_sum('x' ~ i ~ ' * y') }} as traw{{ i }},
        {%- for j in idx if j >= i %}
        {{ stable_sum('x' ~ i ~ ' * x' ~ j) }} as sraw{{ i }}_{{ j }},
        {%- endfor %}
        {%- endfor %}
        {{ stable_sum('y * y') }} as yy
    from {{ design }}
    group by {{ groups }}
),

{{ name }}_scaled as (
    -- the scaled normal equations: a_i_j = s_ij / (r_i r_j), t_i = X'y_i / r_i, g_i = c_i / r_i
    select
        {{ groups }},
        n,
        yy,
        {%- for i in idx %}
        r{{ i }},
        {{ safe_divide('traw' ~ i, 'r' ~ i) }} as t{{ i }},
        {{ safe_divide('craw' ~ i, 'r' ~ i) }} as g{{ i }},
        {%- for j in idx %}
        {%- set lo = [i, j] | min %}{%- set hi = [i, j] | max %}
        {{ safe_divide('sraw' ~ lo ~ '_' ~ hi, 'r' ~ i ~ ' * r' ~ j) }} as a{{ i }}_{{ j }}{{ ',' if not (loop.last and i == p) }}
        {%- endfor %}
        {%- endfor %}
    from {{ name }}_sums
),

{{ name }}_determinant as (
    select
        {{ name }}_scaled.*,
        {{ determinant(matrix) }} as raw_det
    from {{ name }}_scaled
),

{%- set det = '(case when raw_det > 1e-12 then raw_det end)' %}

{{ name }}_solution as (
    -- Cramer's rule: unknown i is det(A with column i replaced by the right-hand side) / det(A)
    select
        {{ name }}_determinant.*,
        {%- for i in idx %}
        {%- set with_t = [] %}{%- set with_g = [] %}
        {%- for row in matrix %}
        {%- do with_t.append(row[:i - 1] + ['t' ~ loop.index] + row[i:]) %}
        {%- do with_g.append(row[:i - 1] + ['g' ~ loop.index] + row[i:]) %}
        {%- endfor %}
        {{ safe_divide(determinant(with_t), det) }} as bs{{ i }},
        {{ safe_divide(determinant(with_g), det) }} as z{{ i }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ name }}_determinant
),

{{ name }} as (
    -- back to the unscaled coefficients; the residual sum of squares from the sums
    -- (y'y - 2 b'X'y + b'X'X b, rounding can take a perfect fit a hair below 0)
    select
        {{ groups }},
        n,
        {%- for i in idx %}
        {{ safe_divide('bs' ~ i, 'r' ~ i) }} as b{{ i }},
        bs{{ i }} * g{{ i }} as bc{{ i }},
        {%- endfor %}
        {% for i in idx %}g{{ i }} * z{{ i }}{{ ' + ' if not loop.last }}{% endfor %} as cz,
        greatest(0.0, yy
            {%- for i in idx %} - 2 * bs{{ i }} * t{{ i }}{% endfor %}
            {%- for i in idx %}{% for j in idx %} + bs{{ i }} * bs{{ j }} * a{{ i }}_{{ j }}{% endfor %}{% endfor %}) as sse
    from {{ name }}_solution
)
{% endmacro %}

{#- the determinant of a square matrix of SQL expressions, by Laplace expansion along the
    first row (n! products: meant for the handful of coefficients of a loss-curve law) -#}
{% macro determinant(matrix) -%}
{%- if matrix | length == 1 -%}
{{ matrix[0][0] }}
{%- else -%}
(
{%- for column in range(matrix | length) -%}
{%- set minor = [] -%}
{%- for row in matrix[1:] -%}{%- do minor.append(row[:column] + row[column + 1:]) -%}{%- endfor -%}
{{ ' - ' if column % 2 == 1 else (' + ' if column > 0 else '') }}{{ matrix[0][column] }} * {{ determinant(minor) }}
{%- endfor -%}
)
{%- endif -%}
{%- endmacro %}
