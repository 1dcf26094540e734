# hearth-agent element settings (sourced by diskimage-builder).
# DIB_HEARTH_AGENT: the single executable to install, built by `npm run build:agent` (required).
# DIB_HEARTH_UNITS: the directory of systemd units. Default: images/systemd beside that build's dist/.
export DIB_HEARTH_AGENT=${DIB_HEARTH_AGENT:-}
if [ -n "$DIB_HEARTH_AGENT" ]; then
    export DIB_HEARTH_UNITS=${DIB_HEARTH_UNITS:-$(dirname "$DIB_HEARTH_AGENT")/../images/systemd}
else
    export DIB_HEARTH_UNITS=${DIB_HEARTH_UNITS:-}
fi
