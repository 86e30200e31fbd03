-- The loss-curve law fitted at every grid point (alpha, and for a bad shard the share of
-- progress its data erased): one row per (run, finding, grid point) with the least-squares
-- coefficients (macros/least_squares.sql) over the finding's fitted evaluations
-- (int_cost_law_design), the residual sum of squares, c' (X'X)^-1 c for the cost's standard
-- error, and the cost split by term (coefficient x contrast). Four shapes of the law, each
-- solved with its own number of coefficients: with or without the LR term, with or without
-- the shard's fresh damage; a coefficient the shape lacks is 0. A grid point with too few
-- points (law_min_extra_points beyond the coefficients) or a collinear regressor has no row.
with

design as (
    select * from {{ run_ref('int_cost_law_design') }}
),

{#- the four shapes of the law: with or without the LR term, with or without the shard exposure;
    each solved with its own number of coefficients -#}
{%- set shapes = [
    {'name': 'fit_lr', 'where': "fit_kind <> 'shard' and has_lr_term", 'x': ['progress', 'lr'],
     'c': ['progress_contrast', 'lr_contrast']},
    {'name': 'fit_plain', 'where': "fit_kind <> 'shard' and not has_lr_term", 'x': ['progress'],
     'c': ['progress_contrast']},
    {'name': 'fit_shard_lr', 'where': "fit_kind = 'shard' and has_lr_term", 'x': ['progress', 'lr', 'excess_new'],
     'c': ['progress_contrast', 'lr_contrast', 'excess_new_contrast']},
    {'name': 'fit_shard', 'where': "fit_kind = 'shard' and not has_lr_term", 'x': ['progress', 'excess_new'],
     'c': ['progress_contrast', 'excess_new_contrast']},
] %}
{%- set terms = ['progress', 'lr', 'excess_new'] %}
{%- set keys = ['run_id', 'finding_id', 'alpha', 'shift_share'] %}

{% for shape in shapes %}
{{ shape.name }}_design as (
    select
        run_id, finding_id, alpha, shift_share, y,
        cast(1 as {{ type_double() }}) as x1, cast(0 as {{ type_double() }}) as c1
        {%- for x in shape.x %},
        {{ x }} as x{{ loop.index + 1 }}, {{ shape.c[loop.index0] }} as c{{ loop.index + 1 }}
        {%- endfor %}
    from design
    where {{ shape.where }}
),

{{ least_squares_ctes(shape.name, shape.name ~ '_design', keys, shape.x | length + 1) }},

{{ shape.name }}_coefficients as (
    -- one shape for all: the coefficient of each term (0 where the shape lacks it) and the
    -- term's share of the cost (coefficient x contrast)
    select
        solved.run_id, solved.finding_id, solved.alpha, solved.shift_share, solved.n,
        {{ shape.x | length + 1 }} as n_params,
        solved.cz,
        solved.sse,
        solved.b1 as b_level,
        {%- for term in terms %}
        {%- if term in shape.x %}
        {%- set i = shape.x.index(term) + 2 %}
        solved.b{{ i }} as b_{{ term }},
        solved.bc{{ i }} as cost_{{ term }}{{ ',' if not loop.last }}
        {%- else %}
        cast(0 as {{ type_double() }}) as b_{{ term }},
        cast(0 as {{ type_double() }}) as cost_{{ term }}{{ ',' if not loop.last }}
        {%- endif %}
        {%- endfor %}
    from {{ shape.name }} as solved
    where solved.n >= {{ shape.x | length + 1 }} + {{ threshold('law_min_extra_points') }}
        {%- for i in range(1, shape.x | length + 2) %}
        and solved.b{{ i }} is not null
        {%- endfor %}
),
{% endfor %}

coefficients as (
    {%- for shape in shapes %}
    select * from {{ shape.name }}_coefficients{{ ' union all' if not loop.last }}
    {%- endfor %}
),

final as (
    select
        run_id,
        finding_id,
        alpha,
        shift_share,
        n,
        n_params,
        sse,
        cz,
        b_level,
        b_progress,
        b_lr,
        b_excess_new,
        cost_progress,
        cost_lr,
        cost_excess_new,
        cost_progress + cost_lr + cost_excess_new as cost
    from coefficients
)

select * from final
