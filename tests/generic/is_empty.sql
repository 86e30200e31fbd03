{#- is_empty: the model lists violations, so it must hold no rows.
    arguments: none (attach to the model).
    fails with every row of the model. -#}
{% test is_empty(model) %}

with violations as (

    select * from {{ model }}

)

select * from violations

{% endtest %}
