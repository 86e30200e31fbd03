-- macros/least_squares.sql against systems with known answers: an exact line (slope and
-- intercept, and c'(X'X)^-1 c = 1/Sxx for the slope), an exact three-term law whose
-- regressors differ by three orders of magnitude (the scaling must keep it exact), and a
-- regressor that is constant (collinear with the intercept: no coefficients, not huge ones).
-- Returns one row per coefficient that misses its answer.
{{ config(severity='error', tags=['project_invariant']) }}

with

design as (
    {%- set rows = [
        ('line', 1, 1.0, 5.0, 0.001), ('line', 2, 1.0, 7.0, 0.002), ('line', 3, 1.0, 9.0, 0.003),
        ('line', 4, 1.0, 11.0, 0.004), ('line', 5, 1.0, 13.0, 0.005),
        ('law', 1, 1.0, 0.5, 0.001), ('law', 2, 1.0, 0.016, 0.004), ('law', 3, 1.0, -0.5, 0.002),
        ('law', 4, 1.0, 0.032, 0.008), ('law', 5, 1.0, -1.5, 0.003), ('law', 6, 1.0, -1.98, 0.005),
        ('flat', 1, 2.0, 1.0, 0.0), ('flat', 2, 2.0, 2.0, 0.0), ('flat', 3, 2.0, 3.0, 0.0),
    ] %}
    {%- for name, x, x2_flat, y, x3 in rows %}
    select '{{ name }}' as system, cast({{ x }} as {{ type_double() }}) as x,
        cast({{ x2_flat }} as {{ type_double() }}) as flat_x, cast({{ y }} as {{ type_double() }}) as y_given,
        cast({{ x3 }} as {{ type_double() }}) as x3{{ ' union all' if not loop.last }}
    {%- endfor %}
),

line_design as (
    -- y = 3 + 2 x
    select system, y_given as y, cast(1 as {{ type_double() }}) as x1, x as x2,
        cast(0 as {{ type_double() }}) as c1, cast(1 as {{ type_double() }}) as c2
    from design where system = 'line'
),

law_design as (
    -- y = 1 - 0.5 x + 500 x3 (x3 ~ 1e-3): y was written from it
    select system, 1 - 0.5 * x + 500 * x3 as y, cast(1 as {{ type_double() }}) as x1, x as x2, x3,
        cast(0 as {{ type_double() }}) as c1, cast(0 as {{ type_double() }}) as c2, cast(0 as {{ type_double() }}) as c3
    from design where system = 'law'
),

flat_design as (
    select system, y_given as y, cast(1 as {{ type_double() }}) as x1, flat_x as x2,
        cast(0 as {{ type_double() }}) as c1, cast(1 as {{ type_double() }}) as c2
    from design where system = 'flat'
),

{{ least_squares_ctes('line_fit', 'line_design', ['system'], 2) }},

{{ least_squares_ctes('law_fit', 'law_design', ['system'], 3) }},

{{ least_squares_ctes('flat_fit', 'flat_design', ['system'], 2) }},

checks as (
    select 'line intercept' as what, b1 as got, 3.0 as expected from line_fit
    union all select 'line slope', b2, 2.0 from line_fit
    union all select 'line c''(X''X)^-1 c', cz, 0.1 from line_fit
    union all select 'law intercept', b1, 1.0 from law_fit
    union all select 'law x', b2, -0.5 from law_fit
    union all select 'law x3', b3, 500.0 from law_fit
),

offending as (
    select what, got, expected from checks
    where got is null or abs(got - expected) > 1e-9 * greatest(1.0, abs(expected))
    union all
    select 'collinear regressor gives no coefficients', b2, cast(null as {{ type_double() }}) from flat_fit
    where b1 is not null or b2 is not null
)

select * from offending
