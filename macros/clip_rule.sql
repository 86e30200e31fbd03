{#- The one clip-violation rule (used by int_gradients_checked and, for superseded
    rows, step_metrics): the logged grad_norm above grad_clip_norm x (1 + clip_tolerance)
    means clipping was not applied, unless the tool logs the norm before clipping
    (grad_norm_measured = 'before_clipping': above the limit then only means clipped). -#}
{% macro is_clip_violation(grad_norm, grad_clip_norm, grad_norm_measured) %}
    (coalesce({{ grad_norm_measured }}, 'after_clipping') <> 'before_clipping'
        and {{ grad_norm }} > {{ grad_clip_norm }} * (1 + {{ threshold('clip_tolerance') }}))
{% endmacro %}
